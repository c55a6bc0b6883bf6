package main

// demoSession is the Session the demo agent of `holdover dev` serves.
const demoSession = "demo"

// demoPrompt starts the demo Session.
const demoPrompt = "Set up the storage layer of the new service."

// demoScript is the demo agent's scripted model: it asks a timed question,
// works on what does not depend on the answer, and reacts to a late answer.
const demoScript = `# The demo agent of holdover dev.
ask db "Which database should the new service use?" options "PostgreSQL (Recommended)",SQLite header Database and region "Where should it run?" options eu,us timeout 30
work 3 steps of 2s
say The question is still open. Meanwhile I wrote the parts that do not depend on the database.
on late answer say Thanks: you answered {answers} for {callId}. Wiring up the storage layer with it now.
`
