import { runsServiceSuite, memoryStorage } from "../../testing/index.js"

runsServiceSuite("memory", memoryStorage)
