import { memoryStorage, storageConformance } from "../../testing/index.js"

storageConformance("memory", memoryStorage)
