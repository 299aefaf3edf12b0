import { webhooksServiceSuite, memoryStorage } from "../../testing/index.js"

webhooksServiceSuite("memory", memoryStorage)
