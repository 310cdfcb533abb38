module mco.dev/argocd/gotemplate

go 1.22
