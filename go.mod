module github.com/sluice-dev/sluice

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/oklog/ulid/v2 v2.1.2
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	golang.org/x/tools v0.38.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
