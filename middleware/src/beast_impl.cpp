// Beast's separately compiled implementation, built once (BOOST_BEAST_SEPARATE_COMPILATION).
#include <boost/beast/src.hpp>
