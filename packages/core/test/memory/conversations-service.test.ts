import { conversationsServiceSuite, memoryStorage } from "../../testing/index.js"

conversationsServiceSuite("memory", memoryStorage)
