import { identityLifecycleSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

identityLifecycleSuite("postgresql", storageLayer)
