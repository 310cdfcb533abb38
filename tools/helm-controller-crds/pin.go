// Package pin keeps the HelmRelease API module a direct requirement of this
// wrapper module (go mod tidy keeps it); build.sh generates the CRD from it.
package pin

import _ "github.com/fluxcd/helm-controller/api/v2"
