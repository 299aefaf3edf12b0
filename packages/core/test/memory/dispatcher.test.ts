import { dispatcherSuite, memoryStorage } from "../../testing/index.js"

dispatcherSuite("memory", memoryStorage)
