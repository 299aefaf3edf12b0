/** The OpenAPI 3.1 document of the API, generated from the HttpApi definition (served at `/openapi.json`). */
import { OpenApi } from "@effect/platform"
import { Api } from "./Api.js"

/** The OpenAPI 3.1 document of every endpoint of `Api` (info version 1.0.0). */
export const openApiDocument = (): OpenApi.OpenAPISpec => OpenApi.fromApi(Api)
