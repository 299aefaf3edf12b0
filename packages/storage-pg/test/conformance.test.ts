import { auditLogTransactions, storageConformance } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

storageConformance("postgresql", storageLayer)
auditLogTransactions(storageLayer)
