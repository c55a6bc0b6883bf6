package main

import _ "embed"

// demoSession is the Session the demo agent of `holdover dev` serves.
const demoSession = "demo"

// demoPrompt starts the demo Session.
const demoPrompt = "Set up the storage layer of the new service."

// demoScript is the demo agent's scripted model: it asks a timed question
// and says what happened — answered in time, or pending while it works on
// what does not depend on the answer, and then a late answer. The browser
// tests play the same file (integration/browser_demo_test.go).
//
//go:embed demo.script
var demoScript string
