import { webhooksServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

webhooksServiceSuite("postgresql", storageLayer)
