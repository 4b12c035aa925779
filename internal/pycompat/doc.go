// Package pycompat reproduces the few Python 3 behaviours that the reference
// scorers (seeds 002, 003, 004) depend on, so that the offline commands agree
// with them number for number: str.lower/strip, the re module's \s and \w,
// round(), float()/int() parsing, universal-newline line splitting and
// json.dumps output.
package pycompat
