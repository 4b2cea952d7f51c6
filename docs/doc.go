// Package docs holds the project's documentation beside the README and
// METHODOLOGY.md, and no code: its test keeps the README short enough for a
// newcomer to read and every relative link between the documents pointing
// at a file and a heading that exist, as GitHub renders them.
package docs
