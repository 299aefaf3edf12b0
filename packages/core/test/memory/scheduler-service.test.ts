import { schedulerServiceSuite, memoryStorage } from "../../testing/index.js"

schedulerServiceSuite("memory", memoryStorage)
