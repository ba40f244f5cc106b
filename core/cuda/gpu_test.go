//go:build gpu

package cuda

// Real-GPU tests: built with -tags gpu (make gpu-bundle), run on a machine with an NVIDIA GPU
// (tests/gpu/run_gpu_checks.py runs this binary with -test.run 'GPU'). Without a usable GPU
// they skip with the reason.

import (
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
)

func init() { realDriver = true }

func TestGPUDriverAndDevices(t *testing.T) {
	useReal(t)
	n := DeviceCount()
	require.GreaterOrEqual(t, n, 1)
	assert.Greater(t, DriverVersion(), 0)
	for i := 0; i < n; i++ {
		d, err := Get(i)
		require.NoError(t, err)
		assert.NotEmpty(t, d.Name())
		t.Logf("cuda:%d %s (driver %d)", i, d.Name(), DriverVersion())
	}
	_, err := Get(n)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

func TestGPULargeBufferZeroFilledAndFreed(t *testing.T) {
	useReal(t)
	d, err := Get(0)
	require.NoError(t, err)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Destroy()
	const size = 1 << 30
	live := LiveBytes()
	buf, err := d.Alloc(size, true, s)
	require.NoError(t, err)
	assert.Equal(t, live+size, LiveBytes())
	tail := make([]byte, 4096)
	for i := range tail {
		tail[i] = 0xFF
	}
	require.NoError(t, s.CopyDtoH(unsafe.Pointer(&tail[0]), uintptr(buf.Data())+size-4096, 4096))
	require.NoError(t, s.Sync())
	assert.Equal(t, make([]byte, 4096), tail)
	buf.Release()
	assert.Equal(t, live, LiveBytes())
}

// Many goroutines allocate, copy and free on locked OS threads at once: the context push/pop
// of every call keeps each thread correct.
func TestGPUConcurrentUseFromManyThreads(t *testing.T) {
	useReal(t)
	d, err := Get(0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			s, err := d.NewStream()
			if err != nil {
				errs <- err
				return
			}
			defer s.Destroy()
			in := make([]byte, 1<<16)
			for i := range in {
				in[i] = byte(g + i)
			}
			var bufs []buffer.Buffer
			for k := 0; k < 8; k++ {
				b, err := d.Alloc(len(in), false, s)
				if err != nil {
					errs <- err
					return
				}
				bufs = append(bufs, b)
			}
			if err := s.CopyHtoD(uintptr(bufs[0].Data()), unsafe.Pointer(&in[0]), len(in)); err != nil {
				errs <- err
				return
			}
			for k := 1; k < len(bufs); k++ {
				if err := s.CopyDtoD(uintptr(bufs[k].Data()), uintptr(bufs[k-1].Data()), len(in)); err != nil {
					errs <- err
					return
				}
			}
			out := make([]byte, len(in))
			if err := s.CopyDtoH(unsafe.Pointer(&out[0]), uintptr(bufs[len(bufs)-1].Data()), len(in)); err != nil {
				errs <- err
				return
			}
			if err := s.Sync(); err != nil {
				errs <- err
				return
			}
			if string(out) != string(in) {
				errs <- status.Errorf(status.Internal, "goroutine %d: data mismatch", g)
			}
			for _, b := range bufs {
				b.Release()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
