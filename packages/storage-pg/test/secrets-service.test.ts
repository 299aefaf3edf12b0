import { secretsServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

secretsServiceSuite("postgresql", storageLayer)
