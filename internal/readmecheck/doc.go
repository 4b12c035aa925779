// Package readmecheck holds the test that follows the README as a new user
// does: it runs the shell blocks of its set-up and "Running the sidecar"
// sections, as written, in a fresh copy of the repository.
package readmecheck
