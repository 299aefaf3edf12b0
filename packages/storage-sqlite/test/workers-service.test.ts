import { workersServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

workersServiceSuite("sqlite", storageLayer)
