"""vj.signal: TensorFlow's FFTs (tf.signal): fft, ifft, fft2d, ifft2d, fft3d, ifft3d,
rfft, irfft, rfft2d, irfft2d, rfft3d, irfft3d (fft_length), fftnd, ifftnd, rfftnd,
irfftnd (axes, norm), fftshift, ifftshift. Differentiable in every mode (complex values:
the op library's convention, README "FFTs"); NumPy's names run the same ops through
`np.fft.<name>(tensor)`, SciPy's through `scipy.fft` and vj.scipy.fft."""
from vecjac._src.ops.fft.tf_signal import *  # noqa: F401,F403
from vecjac._src.ops.fft.tf_signal import __all__  # noqa: F401,E402
