import jaxdp  # noqa: F401  (float64)
import jaxdp.pufferfish  # noqa: F401
