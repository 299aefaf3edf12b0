import { automationsServiceSuite, memoryStorage } from "../../testing/index.js"

automationsServiceSuite("memory", memoryStorage)
