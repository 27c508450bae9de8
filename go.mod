module github.com/sluice-dev/sluice

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/aymanbagabas/go-udiff v0.4.1
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/creack/pty v1.1.24
	github.com/fsnotify/fsnotify v1.10.1
	github.com/oklog/ulid/v2 v2.1.2
	github.com/rogpeppe/go-internal v1.16.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.49.0
	mvdan.cc/sh/v3 v3.14.1
)

require golang.org/x/tools v0.38.0 // indirect
