import { automationsServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

automationsServiceSuite("sqlite", storageLayer)
