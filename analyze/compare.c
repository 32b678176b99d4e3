/* placeholder until compare is written */
#include "analyze/analyze_plot.h"
