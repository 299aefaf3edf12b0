import { conversationsServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

conversationsServiceSuite("postgresql", storageLayer)
