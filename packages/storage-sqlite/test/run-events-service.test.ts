import { runEventsServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

runEventsServiceSuite("sqlite", storageLayer)
