import { runsServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

runsServiceSuite("postgresql", storageLayer)
