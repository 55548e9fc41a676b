package mechanism

// Options are the parsed flags of a command's mechanisms, each
// mechanism's (or estimate kind's) options struct under its name, so that
// a command's Options hold every mechanism's without a field per
// mechanism: the struct, its flags and its accessor live in the
// mechanism's own file of the command, and adding a mechanism does not
// edit the command's Options.
type Options map[string]any

// OptionsOf returns the options of mechanism name in *opts, of type T,
// allocating them on first use (by the mechanism's flag binder, when the
// command is built). Each mechanism's file calls it from one typed
// accessor, so that a name always comes with the same T; a name used with
// two types is a programming error, and panics.
func OptionsOf[T any](opts *Options, name string) *T {
	if *opts == nil {
		*opts = Options{}
	}
	v, ok := (*opts)[name]
	if !ok {
		t := new(T)
		(*opts)[name] = t
		return t
	}
	return v.(*T)
}
