package main

// The tests run serve, approve and a networked sandbox in this process,
// as sluice-engine does: the programs beside sluice are not built here.
import _ "github.com/sluice-dev/sluice/exec/proxyhost"
