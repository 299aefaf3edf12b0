import { identitiesServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

identitiesServiceSuite("sqlite", storageLayer)
