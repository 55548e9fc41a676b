package stage

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestShardRowsBeforeAndAfterTheDashes: --shard-rows before -- (Config,
// as anonymize takes it) sets a keyed stage's shard size too, and the
// stage's own --shard-rows after -- overrides it.
func TestShardRowsBeforeAndAfterTheDashes(t *testing.T) {
	for _, tc := range []struct {
		config int64
		args   []string
		want   int64
	}{
		{0, nil, DefaultShardRows},
		{1300, nil, 1300},
		{0, []string{"--shard-rows", "700"}, 700},
		{1300, []string{"--shard-rows", "700"}, 700},
	} {
		_, got, err := stageFlags("encrypt", Config{ShardRows: tc.config, Args: tc.args}, func(*cobra.Command) {})
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Config.ShardRows %d, args %q: %d rows per shard, want %d", tc.config, tc.args, got, tc.want)
		}
	}
}
