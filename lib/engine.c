/* SPDX-License-Identifier: MIT */
/* engine: libcurl multi engine; for now the process-wide libcurl set-up. */
#include "internal.h"

#include <curl/curl.h>

#include "engine.h"

sbx_status sbx__engine_global_init(void)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc == CURLE_OUT_OF_MEMORY)
        return SBX_E_NOMEM;
    return rc == CURLE_OK ? SBX_OK : SBX_E_INTERNAL;
}

void sbx__engine_global_cleanup(void)
{
    curl_global_cleanup();
}
