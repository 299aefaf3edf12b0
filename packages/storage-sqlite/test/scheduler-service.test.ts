import { schedulerServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

schedulerServiceSuite("sqlite", storageLayer)
