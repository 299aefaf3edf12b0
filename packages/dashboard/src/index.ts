/**
 * The Node side of the dashboard: where its built files are. `appDir` is `dist/app` of this
 * package (built by `vite build` from `app/`; `npm run build` at the root builds it), whether this
 * module is read from its sources (`src/`) or from `dist/`.
 */
import { fileURLToPath } from "node:url"

/** The absolute path of the built single-page app (`index.html` and `assets/`). */
export const appDir: string = fileURLToPath(new URL("../dist/app", import.meta.url))
