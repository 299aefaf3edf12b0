import { dispatcherSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

dispatcherSuite("sqlite", storageLayer)
