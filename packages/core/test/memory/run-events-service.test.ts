import { memoryStorage, runEventsServiceSuite } from "../../testing/index.js"

runEventsServiceSuite("memory", memoryStorage)
