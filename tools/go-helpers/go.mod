// Small Go programs the tests run as real Go peers (Go's regexp, text/template,
// net/http). Standard library only; built once by build.sh.
module mco.dev/go-helpers

go 1.22
