import { ingressServiceSuite, memoryStorage } from "../../testing/index.js"

ingressServiceSuite("memory", memoryStorage)
