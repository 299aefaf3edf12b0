import { identityLifecycleSuite, memoryStorage } from "../../testing/index.js"

identityLifecycleSuite("memory", memoryStorage)
