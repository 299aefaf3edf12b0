import { render } from "preact"
import { App } from "./App.js"
import { takeSignInResult } from "./sso.js"
import "./style.css"

takeSignInResult()
render(<App />, document.getElementById("root")!)
