// Command load is sluice's load test (make load): many agent processes at
// once against one 'sluice serve', a scripted person approving what the
// policy asks about, then every request checked to have one result and
// to have run at most once. It is e2e.Load's flags; see
// internal/e2e/load.go for what it does, measures and checks.
//
//	go run ./scripts/load              # 50 agents x 100 requests
//	go run ./scripts/load -quick       # 8 agents x 20 requests, a smoke test
//	go run ./scripts/load -agents 200 -requests 20 -max-auto 16
package main

import "github.com/sluice-dev/sluice/internal/e2e"

func main() { e2e.Main("load", "a smoke test: 8 agents x 20 requests", e2e.LoadDefaults(), e2e.Load) }
