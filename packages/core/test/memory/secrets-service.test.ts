import { secretsServiceSuite, memoryStorage } from "../../testing/index.js"

secretsServiceSuite("memory", memoryStorage)
