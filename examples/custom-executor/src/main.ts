/**
 * Runs the example: `PORT` (3000), `DATA_DIR` (./data), `PUBLIC_URL` (http://localhost:PORT/agents),
 * `SECRET_KEY` (32 bytes, base64) and `ADMIN_TOKEN` (`ar_…`) from the environment.
 */
import { mkdirSync } from "node:fs"
import { createApp } from "./app.js"

const required = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} is required (see the README)`)
  return value
}

const port = Number(process.env.PORT ?? 3000)
const dataDir = process.env.DATA_DIR ?? "data"
mkdirSync(dataDir, { recursive: true })
const { agents, server } = await createApp({
  dataDir,
  publicUrl: process.env.PUBLIC_URL ?? `http://localhost:${port}/agents`,
  secretKey: new Uint8Array(Buffer.from(required("SECRET_KEY"), "base64")),
  adminToken: required("ADMIN_TOKEN")
})
server.listen(port, () => console.log(`http://localhost:${port}/, Agent Runs at /agents (API docs: /agents/docs)`))
const stop = () => server.close(() => void agents.close())
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
