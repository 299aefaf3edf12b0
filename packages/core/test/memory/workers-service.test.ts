import { workersServiceSuite, memoryStorage } from "../../testing/index.js"

workersServiceSuite("memory", memoryStorage)
