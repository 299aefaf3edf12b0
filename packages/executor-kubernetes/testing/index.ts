export * as ApiServerDouble from "./ApiServerDouble.js"
