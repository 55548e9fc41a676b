package table

import "os"

// scratchFile is a writer's private temporary file (a wide row group's
// bits, a footer's row group metadata). It is unlinked as soon as it is
// made: it lives while it is open and goes when the process ends, however
// it ends. Where an open file cannot be unlinked (Windows), or when unlink
// is false (tests), close removes it, or the signal handler (TrackTemp)
// if a signal ends the run.
type scratchFile struct {
	*os.File
	name   string // the file's name while it is to be removed by close
	forget func() // TrackTemp's, with name
}

// Scratch makes a private temporary file (pattern as os.CreateTemp's)
// for another package's scratch data, with a writer's scratchFile rules:
// unlinked as soon as it is made where the system allows; done closes it,
// and removes it where it could not be unlinked.
func Scratch(pattern string) (f *os.File, done func(), err error) {
	s, err := newScratch(pattern, true)
	if err != nil {
		return nil, nil, err
	}
	return s.File, s.close, nil
}

// newScratchFile makes a writer's scratchFile in the temporary folder.
func newScratchFile(unlink bool) (*scratchFile, error) {
	return newScratch("pramkit-parquet-*", unlink)
}

func newScratch(pattern string, unlink bool) (*scratchFile, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, err
	}
	s := &scratchFile{File: f}
	if !unlink || os.Remove(f.Name()) != nil {
		s.name = f.Name()
		if s.forget, err = TrackTemp(s.name); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// close closes the file and removes it if it was not unlinked; safe on
// nil and twice.
func (s *scratchFile) close() {
	if s == nil || s.File == nil {
		return
	}
	s.File.Close()
	s.File = nil
	if s.name != "" {
		os.Remove(s.name)
		if s.forget != nil {
			s.forget()
		}
		s.name, s.forget = "", nil
	}
}
