import { followupsServiceSuite, memoryStorage } from "../../testing/index.js"

followupsServiceSuite("memory", memoryStorage)
