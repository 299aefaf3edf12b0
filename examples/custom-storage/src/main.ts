/**
 * Runs the example: `DATABASE_URL` (postgres://…), `PORT` (3000), `DATA_DIR` (./data),
 * `PUBLIC_URL` (http://localhost:PORT/agents), `SECRET_KEY` (32 bytes, base64) and `ADMIN_TOKEN`
 * (`ar_…`) from the environment.
 */
import { mkdirSync } from "node:fs"
import pg from "pg"
import { createApp } from "./app.js"

const required = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} is required (see the README)`)
  return value
}

const port = Number(process.env.PORT ?? 3000)
const dataDir = process.env.DATA_DIR ?? "data"
mkdirSync(dataDir, { recursive: true })
// The host's pool, made before Agent Runs and ended after it.
const pool = new pg.Pool({ connectionString: required("DATABASE_URL"), max: 10 })
const { agents, server } = await createApp({
  pool,
  dataDir,
  publicUrl: process.env.PUBLIC_URL ?? `http://localhost:${port}/agents`,
  secretKey: new Uint8Array(Buffer.from(required("SECRET_KEY"), "base64")),
  adminToken: required("ADMIN_TOKEN")
})
server.listen(port, () => console.log(`http://localhost:${port}/, Agent Runs at /agents (API docs: /agents/docs)`))
const stop = () => server.close(() => void agents.close().then(() => pool.end()))
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
