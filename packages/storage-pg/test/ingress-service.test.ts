import { ingressServiceSuite } from "@agent-runs/core/testing"
import { storageLayer } from "./harness.js"

ingressServiceSuite("postgres", storageLayer)
