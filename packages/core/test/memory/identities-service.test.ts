import { identitiesServiceSuite, memoryStorage } from "../../testing/index.js"

identitiesServiceSuite("memory", memoryStorage)
