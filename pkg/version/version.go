// Package version says which pramkit build is running. Every output file
// records it in its metadata, so a result can be traced to the code.
package version

import "runtime/debug"

// Version is set at link time by the Makefile
// (-ldflags "-X github.com/pramkit/pramkit/pkg/version.Version=…").
var Version = ""

// String returns Version, else the module version or VCS revision that the
// Go toolchain stamped into the binary, else "dev".
func String() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
}
