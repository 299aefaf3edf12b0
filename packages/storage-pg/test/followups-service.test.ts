import { followupsServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

followupsServiceSuite("postgresql", storageLayer)
