import { followupsServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

followupsServiceSuite("sqlite", storageLayer)
