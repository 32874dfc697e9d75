/* SPDX-License-Identifier: MIT */
/* Redactor shape cases: texts, and the same texts with each credential replaced by a marker. */
/*
 * want is text with every redacted span replaced by [REDACTED:<kind>], or text
 * itself when nothing may be redacted; kind names the shape a case exercises
 * ("none" for plain text). Every credential here is fake, and each is split
 * across two string literals so that secret scanners reading this file do not
 * see a whole token; the compiler joins them.
 */
#ifndef SBX_TESTS_REDACT_SHAPES_CASES_H
#define SBX_TESTS_REDACT_SHAPES_CASES_H

static const struct {
    const char *kind;
    const char *text;
    const char *want;
} redact_shape_cases[] = {
    /* GitHub classic tokens: gh[pousr]_ + 36 [A-Za-z0-9], whole token redacted. */
    {"github", "gh" "p_m0xVQzJXtw3XVBOsrT5mH3DaWvTrmFLHBMUA", "[REDACTED:github]"},
    {"github", "gh" "o_PTT0aZN0dnruqXa71P2tD8vkQXRYO1NiJ7br", "[REDACTED:github]"},
    {"github", "gh" "u_D03q2YBV097shZXGqa6tcVy4DHkmLrDzq9qS", "[REDACTED:github]"},
    {"github", "gh" "s_txuUsNh6AV1iB8PP1XXxhu0bsCjxJ675EvQ3", "[REDACTED:github]"},
    {"github", "gh" "r_0xyQAnudQn9nIFP28UWcdYDESOKf5nsaLLSn", "[REDACTED:github]"},
    {"github",
        "export GITHUB_TOKEN=gh" "p_Dv40j599DtczwzyVrszEYX4aG8sSAXtMKNUJ",
        "export GITHUB_TOKEN=[REDACTED:github]"},
    {"github",
        "token gh" "p_64ax6vm2EWmUby6RFnCakeiouTTyPatiK27F, expires soon\n",
        "token [REDACTED:github], expires soon\n"},
    {"github",
        "{\"token\":\"gh" "o_4T3TgOLubYXrMxbyq0dvBPAG1XykIUmW7tPh\"}",
        "{\"token\":\"[REDACTED:github]\"}"},
    {"github",
        "https://gh" "p_d8bhBnDzu0nyj2GcLnBC7hRD0apSMyAusrcS@github.com/o/r.git",
        "https://[REDACTED:github]@github.com/o/r.git"},
    {"github",
        "a gh"
        "s_LLzQ3zYCzoKn8GAw18VJSGj0wU8fXtWxQXNI b gh"
        "u_7Z9kWrKnR4Ae28UZ5ErtPpwZub4Q60SSKdi1 c",
        "a [REDACTED:github] b [REDACTED:github] c"},
    {"github", "gh" "p_edl0y6WU1josnTA0pkHE37AK1AsjarA7717T-suffix", "[REDACTED:github]-suffix"},
    {"github", "(gh" "r_ZnLiRtTFKBsH2cDE2WIOvmeUuymJpEfxSrGz).", "([REDACTED:github])."},
    {"github",
        "GH_TOKEN='gh" "p_Zcythy2iVgyf0Eyf2eXfjGkldl36AWMudT8q'\n",
        "GH_TOKEN='[REDACTED:github]'\n"},
    /* GitHub fine-grained PATs: github_pat_ + 82 [A-Za-z0-9_], the 22_59 form included. */
    {"github",
        "gi"
        "thub_pat_VWth6iUJ2oKdcj23vMcWYK_tP4eILSs2AqNJuhC6lzq9smdCevv8BoHuvxOQMAqZe4FTuVx"
        "qicHpNLNHg2",
        "[REDACTED:github]"},
    {"github",
        "GITHUB_TOKEN=gi"
        "thub_pat_bQXlhMaUmE57L9jUo4IiHo_VQIzNcXH1gD1cjOwd6w7VJMQZ6MyJwC7IZh9dStnaVEADcl8"
        "sBY90wijsBu\n",
        "GITHUB_TOKEN=[REDACTED:github]\n"},
    {"github",
        "pat: gi"
        "thub_pat_gwbowwCUAa5ZBwvB2fAcO7DU45PkCp753IVDsMdRuD7Z14CkUUbnF0GMubuHwrqDiaudfBX"
        "TbETSHrqng3 ok",
        "pat: [REDACTED:github] ok"},
    /* GitHub near misses: wrong length, glued to a word, wrong case. */
    {"github", "gh" "p_short", "gh" "p_short"},
    {"github",
        "gh" "p_DHI4WvNx558gKVXtHVa0eHEXwq3CZYReVMK",
        "gh" "p_DHI4WvNx558gKVXtHVa0eHEXwq3CZYReVMK"},
    {"github",
        "gh" "p_xBi8p0gWaesv5NKTHbgjD8XNCWJXtzvCuoPDX",
        "gh" "p_xBi8p0gWaesv5NKTHbgjD8XNCWJXtzvCuoPDX"},
    {"github",
        "gh" "p_Fweirh3ku3HoUnSfQRlTccUfvPOdciB20w0T_x",
        "gh" "p_Fweirh3ku3HoUnSfQRlTccUfvPOdciB20w0T_x"},
    {"github",
        "xgh" "p_VI1JSMcAdaOzUseYdVVwQ03Msm9b8ZHipt2q",
        "xgh" "p_VI1JSMcAdaOzUseYdVVwQ03Msm9b8ZHipt2q"},
    {"github",
        "my_gh" "p_fHqoJwMJRIygSU72RIKbD0yg5ke7x5OZHonV",
        "my_gh" "p_fHqoJwMJRIygSU72RIKbD0yg5ke7x5OZHonV"},
    {"github",
        "GHP_A1LzP814hTfBTFEEhV0Fg2Xpvd8aFotOVygK",
        "GHP_A1LzP814hTfBTFEEhV0Fg2Xpvd8aFotOVygK"},
    {"github",
        "gh" "p_ysRiIbsED1s3WLJ46fUQ3SxrO5qHGy-RzjD6",
        "gh" "p_ysRiIbsED1s3WLJ46fUQ3SxrO5qHGy-RzjD6"},
    {"github", "gi" "thub_pat_short", "gi" "thub_pat_short"},
    {"github",
        "gi"
        "thub_pat_f58lkIDErUAUIfTeVgJFlG_1GjK7BWkgFgHGS870xHrqxDnwoaVLHfKA84V7BmWndLFbkp4"
        "B2LOpdBWam",
        "gi"
        "thub_pat_f58lkIDErUAUIfTeVgJFlG_1GjK7BWkgFgHGS870xHrqxDnwoaVLHfKA84V7BmWndLFbkp4"
        "B2LOpdBWam"},
    {"github",
        "gi"
        "thub_pat_BJ8kvUXGAAjL7lrIIqBljM_wztSuRYRGSvjn8oljTQcDPA0wi2kK8XXO3gi0UOv6Vgtfn4G"
        "3aFck9EvgvIF",
        "gi"
        "thub_pat_BJ8kvUXGAAjL7lrIIqBljM_wztSuRYRGSvjn8oljTQcDPA0wi2kK8XXO3gi0UOv6Vgtfn4G"
        "3aFck9EvgvIF"},
    {"github",
        "MY_gi"
        "thub_pat_LXUTNRyECPjBSnAuxKfvI3_cZoKVGSom5lSe1ZklIsPymzeLltcppaWvV82bhzo0VK3zDJy"
        "ycFRPX8ih5V",
        "MY_gi"
        "thub_pat_LXUTNRyECPjBSnAuxKfvI3_cZoKVGSom5lSe1ZklIsPymzeLltcppaWvV82bhzo0VK3zDJy"
        "ycFRPX8ih5V"},
    {"github",
        "gh pr list --state open --label gh" "p_triage",
        "gh pr list --state open --label gh" "p_triage"},
    /* GitLab PATs: glpat- + 20 [A-Za-z0-9_-], or routable: 27..300 of them + .[vv.]crc9. */
    {"gitlab", "gl" "pat-BLJOMSX29wUJCZu9ygp6", "[REDACTED:gitlab]"},
    {"gitlab",
        "PRIVATE-TOKEN: gl" "pat-ab_sXwW4IuIe6-lAPKrG\r\n",
        "PRIVATE-TOKEN: [REDACTED:gitlab]\r\n"},
    {"gitlab", "use gl" "pat-rSAitGQlPAkOjCExbh42.", "use [REDACTED:gitlab]."},
    {"gitlab", "gl" "pat-U_YPo09rNkW1Zw9-OHp46pBMt1toKZFr1WkBpxtx.buxmmbson", "[REDACTED:gitlab]"},
    {"gitlab",
        "token=gl" "pat-mgMtTFC6Y_Xi25mtl3XZFmG5LjyJ_LO.01.ghrpw31qk end",
        "token=[REDACTED:gitlab] end"},
    {"gitlab",
        "CI_TOKEN=gl"
        "pat-Xt-8qy4-3bmdOGIstriIp9ljM7r04zHBgsDgwOz6AXL7kbgGmvgoyN7b3_5saPyxFe-1DS3VBGQm"
        "mVfUZ4ZF3atnEy2pSEH093fJ9FoPTQcwcSUzRjzAvlAp.01.2dnys67gg.\n",
        "CI_TOKEN=[REDACTED:gitlab].\n"},
    /* GitLab near misses. */
    {"gitlab", "gl" "pat-token", "gl" "pat-token"},
    {"gitlab", "gl" "pat-3cPs5fD7yrIN3TO2f61", "gl" "pat-3cPs5fD7yrIN3TO2f61"},
    {"gitlab", "gl" "pat-Aq7NBGLOOUnUN91ZKirLd", "gl" "pat-Aq7NBGLOOUnUN91ZKirLd"},
    {"gitlab",
        "gl" "pat-B9pbCSb1HjLnPFvDRNcyKwPMCXwzyD",
        "gl" "pat-B9pbCSb1HjLnPFvDRNcyKwPMCXwzyD"},
    {"gitlab",
        "gl" "pat-jLmp8FJX78veyBWnAxvkTylrv1IPlu.ZMFOLKXAR",
        "gl" "pat-jLmp8FJX78veyBWnAxvkTylrv1IPlu.ZMFOLKXAR"},
    {"gitlab",
        "gl" "pat-2FCzPDDIOuGiMDHceiMZqF6ckBd5fQ.01.5mx3ybwv",
        "gl" "pat-2FCzPDDIOuGiMDHceiMZqF6ckBd5fQ.01.5mx3ybwv"},
    {"gitlab", "xgl" "pat-ZIM1OlecTGxdlux0R27C", "xgl" "pat-ZIM1OlecTGxdlux0R27C"},
    {"gitlab", "see docs/gl" "pat-format.md", "see docs/gl" "pat-format.md"},
    /* Runner tokens from registration (glrtr-) and workspace tokens (glwt-):
     * the same legacy and routable forms as glpat-. */
    {"gitlab", "CI_RUNNER_TOKEN=gl" "rtr-EhmSVkyeiLU7EUaF_TDG\n", "CI_RUNNER_TOKEN=[REDACTED:gitlab]\n"},
    {"gitlab",
        "token: gl" "rtr-lG8HjiSxymIm7E1MVoVuT74954nwRD-Xkfd7LLTI.01.u9hh6ensy\n",
        "token: [REDACTED:gitlab]\n"},
    {"gitlab", "{\"token\":\"gl" "wt-5j8EE8eVxgTj0R6ekNiM\"}", "{\"token\":\"[REDACTED:gitlab]\"}"},
    {"gitlab", "gl" "wt-np3CXMbdRFTQSKI67VqktUASHE4C2j239cjIz9F7.0dfpnyj1w.", "[REDACTED:gitlab]."},
    /* their near misses: a body one short or one long, glued to a word, a
     * CRC in upper case, a word after the prefix */
    {"gitlab", "gl" "rtr-RoK_VKJDFlcjq4gfBLo", "gl" "rtr-RoK_VKJDFlcjq4gfBLo"},
    {"gitlab", "gl" "rtr-RoK_VKJDFlcjq4gfBLoO7", "gl" "rtr-RoK_VKJDFlcjq4gfBLoO7"},
    {"gitlab", "my_gl" "rtr-RoK_VKJDFlcjq4gfBLoO", "my_gl" "rtr-RoK_VKJDFlcjq4gfBLoO"},
    {"gitlab",
        "gl" "rtr-lG8HjiSxymIm7E1MVoVuT74954nwRD-Xkfd7LLTI.01.U9HH6ENSY",
        "gl" "rtr-lG8HjiSxymIm7E1MVoVuT74954nwRD-Xkfd7LLTI.01.U9HH6ENSY"},
    {"gitlab", "gl" "wt-_8lW2dgMMpFkFJXHcJi", "gl" "wt-_8lW2dgMMpFkFJXHcJi"},
    {"gitlab", "xgl" "wt-_8lW2dgMMpFkFJXHcJiz", "xgl" "wt-_8lW2dgMMpFkFJXHcJiz"},
    {"gitlab", "see gl" "wt-workspaces in the docs", "see gl" "wt-workspaces in the docs"},
    /* Slack: xox[abposre]- + 10..250 [A-Za-z0-9-], numeric first group, 2+ groups, a letter. */
    {"slack", "xo" "xb-662489506807-4895205592964-zfWjGo52mHebdyXz4xb2AptW", "[REDACTED:slack]"},
    {"slack",
        "xo" "xp-63554171628-005023632171-3843363686474-b9f5f9707d5bbd933e4a241d65099eec",
        "[REDACTED:slack]"},
    {"slack",
        "SLACK_BOT_TOKEN=xo" "xb-800203763508-5028265908929-YUIcb9RCrB1AnJxzYkiCvbdY\n",
        "SLACK_BOT_TOKEN=[REDACTED:slack]\n"},
    {"slack",
        "xo"
        "xe-1-Q33DN9FMIM8854UTFB9JYDY78S372XJ6QQZN17UV9SXO5Y80GY2FQCR5FM4874NX845FKJCSSYT"
        "PGFFNWOEEMJCWA2RDF3SEP8ON3FAKC9YY7WSWEXV23IJLQ31XGZ3LQO2JMF68B5Z1HSUI0Q",
        "[REDACTED:slack]"},
    {"slack",
        "xo"
        "xe.xo"
        "xp-1-FJU2W5SYK2Z9MEDC1H70D08ASCKL3CY0S1B9B2K1BOQIJ60TKX8CRYGVG898BXPMA8EBHU642LS"
        "70ISN21MGD3JILEICK048N86B5FSB19SI0O242YY7E7EUJ3K1IMSP2VT6H9448MSX8KFL8PHDGV32SSU"
        "00MZ1ODX",
        "xo" "xe.[REDACTED:slack]"},
    {"slack", "xo" "xa-2-44405931844-ZhxBRwliS57E6OZopUc5", "[REDACTED:slack]"},
    {"slack", "\"xo" "xs-2934242808-TnwAenhXELIz\"", "\"[REDACTED:slack]\""},
    {"slack",
        "xo" "xr-61954415-i5LWWHMIK1qOG1vNSyEJrkG955u3KG and xo" "xo-92467137-m2hpCnmzDv1cTpLP",
        "[REDACTED:slack] and [REDACTED:slack]"},
    /* Slack near misses. */
    {"slack", "xo" "xo-gossip-girl", "xo" "xo-gossip-girl"},
    {"slack", "xo" "xo-2024-05-17.jpg", "xo" "xo-2024-05-17.jpg"},
    {"slack", "hugs, xo" "xo", "hugs, xo" "xo"},
    {"slack", "xo" "xb-1234", "xo" "xb-1234"},
    {"slack", "xo" "xb-abc-def-ghijklmnop", "xo" "xb-abc-def-ghijklmnop"},
    {"slack", "xo" "xz-1234567890-abcdefghij", "xo" "xz-1234567890-abcdefghij"},
    {"slack", "xo" "xb-1234567890--abcdefghij", "xo" "xb-1234567890--abcdefghij"},
    {"slack", "xo" "xb-1234567890-abcdefghij-", "xo" "xb-1234567890-abcdefghij-"},
    {"slack", "xo" "xb-1234567890-abcdefghij_x", "xo" "xb-1234567890-abcdefghij_x"},
    {"slack", "my-xo" "xb-1234567890-abcdefghij", "my-xo" "xb-1234567890-abcdefghij"},
    {"slack",
        "xo"
        "xb-936362585887-bh74qZsWMIfGfBIMhQcBsxkpNhhRhVFiToGwjoADflfbXQB2DNOm6ru2xRHHtFPP"
        "qP0ZBmkEOnVgUaxayXvedgEK47zRv67XNhwPH84NYqkQ84zs0xmGnQVZnbY265vJW0Wp47ycTE19KlHm"
        "Pe7FnxeEMseyeEqSkYk0CA9EMXdLK3VgY8SmwNJ1vChuGirDXnsjLjFsKAfAMOWPJ9qoomYpuj8NpQtX"
        "t6paDcd1Fm2wOLDrQcIi3W94bp",
        "xo"
        "xb-936362585887-bh74qZsWMIfGfBIMhQcBsxkpNhhRhVFiToGwjoADflfbXQB2DNOm6ru2xRHHtFPP"
        "qP0ZBmkEOnVgUaxayXvedgEK47zRv67XNhwPH84NYqkQ84zs0xmGnQVZnbY265vJW0Wp47ycTE19KlHm"
        "Pe7FnxeEMseyeEqSkYk0CA9EMXdLK3VgY8SmwNJ1vChuGirDXnsjLjFsKAfAMOWPJ9qoomYpuj8NpQtX"
        "t6paDcd1Fm2wOLDrQcIi3W94bp"},
    /* Stripe live keys: sk_live_ / rk_live_ + 24..247 [A-Za-z0-9]. */
    {"stripe", "sk" "_live_5NcC2pd6pJNK2UPREpTdXZHE", "[REDACTED:stripe]"},
    {"stripe",
        "sk"
        "_live_LoiXbSSmID76GjCQnO6ghM3Az9JsnpsvhucvQ5dvfCWvm9CmEgUpR0BWfQpQyIjH8BPkKXP3ia"
        "CfX1rMHYlBlUmmaGSnT7LrWsb",
        "[REDACTED:stripe]"},
    {"stripe",
        "rk"
        "_live_MYS5yN1oetbcDPkxSPiUXaP4FxGrkcDf2S8J1eJADeAkN736EJAO72X2b5qRdZ2ce8zIc2n6MP"
        "sA7aFMlFwXxDcyFwHZ69wyZIo",
        "[REDACTED:stripe]"},
    {"stripe",
        "STRIPE_SECRET_KEY=sk" "_live_OZ39iH2cdt31HlgRv3wUdDtw\n",
        "STRIPE_SECRET_KEY=[REDACTED:stripe]\n"},
    {"stripe",
        "stripe.api_key = \"sk" "_live_uI2dRJSMkemFfVwZs1ag3qkynKxUsW4HWo\"",
        "stripe.api_key = \"[REDACTED:stripe]\""},
    /* Stripe near misses: a body too short (23) or too long (248), one running
     * on into "_", and a prefix inside a word. */
    {"stripe", "sk" "_live_short", "sk" "_live_short"},
    {"stripe", "sk" "_live_3tIMfSbxxaryUTwrDIYjABD", "sk" "_live_3tIMfSbxxaryUTwrDIYjABD"},
    {"stripe",
        "sk"
        "_live_wbVXLLEt9yZo7fwHq6o51pYIoX5Efbbj1GVCclar4sRZfvAZ70ZfjLx5dc7GHcX4N4aeasN67O"
        "PmA2aIGdBVxEf6m3kVSDOQpOcfomfl4xX6t2E1iDE3C6YKx2tBkMWj2V4kYQI9Ef8LeUEFSb3Jfyg5ME"
        "3V0AiE4o4pTBZTx5b3CP1IdwkHOHWazyjXv7PM7o4n0gXovFZU4T3jDPX9JZLgnjhagxjhEDo6rPCgjh"
        "2tQZacmnEETMuO",
        "sk"
        "_live_wbVXLLEt9yZo7fwHq6o51pYIoX5Efbbj1GVCclar4sRZfvAZ70ZfjLx5dc7GHcX4N4aeasN67O"
        "PmA2aIGdBVxEf6m3kVSDOQpOcfomfl4xX6t2E1iDE3C6YKx2tBkMWj2V4kYQI9Ef8LeUEFSb3Jfyg5ME"
        "3V0AiE4o4pTBZTx5b3CP1IdwkHOHWazyjXv7PM7o4n0gXovFZU4T3jDPX9JZLgnjhagxjhEDo6rPCgjh"
        "2tQZacmnEETMuO"},
    {"stripe",
        "sk" "_live_rhucuvP9TqfF7KoFB5DSxdPhRnayiA_x",
        "sk" "_live_rhucuvP9TqfF7KoFB5DSxdPhRnayiA_x"},
    {"stripe",
        "ask" "_live_xzucE38Ep4vSFb5PMH38G90t0r7hIa",
        "ask" "_live_xzucE38Ep4vSFb5PMH38G90t0r7hIa"},
    /* Test-mode keys open a Stripe account's test data: secrets too. */
    {"stripe", "sk" "_test_90HBv6NfwlwKcfC49gCOjgpT", "[REDACTED:stripe]"},
    {"stripe", "STRIPE_KEY=rk" "_test_51HqLyjWDarjtT1zdp7dcXjC2b4D5e6F7g8", "STRIPE_KEY=[REDACTED:stripe]"},
    {"stripe", "task" "_test_90HBv6NfwlwKcfC49gCOjgpTabc", "task" "_test_90HBv6NfwlwKcfC49gCOjgpTabc"},
    {"stripe", "sk" "_test_short", "sk" "_test_short"},
    {"stripe", "signing secret: wh" "sec_EXAMPLEexampleEXAMPLEexample0000\n",
        "signing secret: [REDACTED:stripe]\n"},
    {"stripe", "wh" "sec_" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "[REDACTED:stripe]"},
    {"stripe", "wh" "sec_tooShort123", "wh" "sec_tooShort123"},
    {"stripe", "pk_live_Qsatw7I44BoTdXPsLTvMhEeb", "pk_live_Qsatw7I44BoTdXPsLTvMhEeb"},
    /* GitLab's other token prefixes (docs: "Token prefixes"). */
    {"gitlab", "deploy: gl" "dt-EXAMPLEexample000000", "deploy: [REDACTED:gitlab]"},
    {"gitlab", "gl" "oas-" "EXAMPLEexampleEXAMPLEexampleEXAMPLEexampleEXAMPLEexampleEXAMPLEe", "[REDACTED:gitlab]"},
    {"gitlab", "CI_JOB_TOKEN=gl" "cbt-64_EXAMPLEexample000000", "CI_JOB_TOKEN=[REDACTED:gitlab]"},
    {"gitlab", "gl" "ptt-0123456789abcdef0123456789abcdef01234567", "[REDACTED:gitlab]"},
    {"gitlab", "gl" "ptt-0123456789abcdef0123456789abcdef0123456z", "gl" "ptt-0123456789abcdef0123456789abcdef0123456z"},
    {"gitlab", "feed gl" "ft-EXAMPLEexample000000 ok", "feed [REDACTED:gitlab] ok"},
    {"gitlab", "gl" "imt-EXAMPLEexample00000000000", "[REDACTED:gitlab]"},
    {"gitlab", "gl" "agent-EXAMPLEexampleEXAMPLEexampleEXAMPLEexample00abcdef", "[REDACTED:gitlab]"},
    {"gitlab", "gl" "soat-EXAMPLEexample000000", "[REDACTED:gitlab]"},
    {"gitlab", "gl" "ffct-EXAMPLEexample000000", "[REDACTED:gitlab]"},
    {"gitlab", "gl" "rt-EXAMPLEexample000000", "[REDACTED:gitlab]"},
    {"gitlab", "gl" "rt-t1_EXAMPLEexampleEXAMPLEexample000.012345678", "[REDACTED:gitlab]"},
    {"gitlab", "registration GR" "1348941EXAMPLEexample000000", "registration [REDACTED:gitlab]"},
    {"gitlab", "gl" "dt-short", "gl" "dt-short"},
    {"gitlab", "global-configuration-manager-x", "global-configuration-manager-x"},
    /* Slack app-level tokens and webhook URLs (the host and path kind are public). */
    {"slack", "xa" "pp-1-A0EXAMPLE00-1234567890123-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "[REDACTED:slack]"},
    {"slack", "SLACK_WEBHOOK=https://hooks.slack.com/services/" "TEXAMPLE0/BEXAMPLE0/EXAMPLEexampleEXAMPLE000\n",
        "SLACK_WEBHOOK=https://hooks.slack.com/services/[REDACTED:slack]\n"},
    {"slack", "\"url\": \"https://hooks.slack.com/workflows/" "TEXAMPLE0/AEXAMPLE0/123456789012345678/EXAMPLEexampleEXAMPLE000\"",
        "\"url\": \"https://hooks.slack.com/workflows/[REDACTED:slack]\""},
    {"slack", "see https://hooks.slack.com/services/ for setup", "see https://hooks.slack.com/services/ for setup"},
    {"slack", "https://hooks.slack.com/services/T000/B000/short", "https://hooks.slack.com/services/T000/B000/short"},
    {"slack", "xoxe.xo" "xp-1-EXAMPLEexampleEXAMPLEexampleEXAMPLE", "xoxe.[REDACTED:slack]"},
    /* Google OAuth client secrets and access tokens. */
    {"google", "client_secret: GO" "CSPX-EXAMPLEexample_EXAMPLE-examp", "client_secret: [REDACTED:google]"},
    {"google", "GO" "CSPX-test-secret", "GO" "CSPX-test-secret"},
    {"google", "Bearer-less ya" "29.a0EXAMPLEexample-EXAMPLE_example0000 end", "Bearer-less [REDACTED:google] end"},
    {"google", "ya29.short", "ya29.short"},
    /* Hugging Face. */
    {"huggingface", "HF_TOKEN=hf" "_EXAMPLEexampleEXAMPLEexampleEXAMPL", "HF_TOKEN=[REDACTED:huggingface]"},
    {"huggingface", "hf_token = None", "hf_token = None"},
    {"huggingface", "rhf" "_SponsoredProductsEXAMPLEexampleEXA", "rhf" "_SponsoredProductsEXAMPLEexampleEXA"},
    {"huggingface", "api" "_org_EXAMPLEexampleEXAMPLEexampleEXAMPL", "[REDACTED:huggingface]"},
    /* PyPI. */
    {"pypi", "password = py" "pi-AgEIcHlwaS5vcmc" "EXAMPLEexample0EXAMPLEexample0EXAMPLEexample0EXAMPLEexample0EXAMPLEexample0\n",
        "password = [REDACTED:pypi]\n"},
    {"pypi", "py" "pi-AgENdGVzdC5weXBpLm9yZw" "EXAMPLEexample0EXAMPLEexample0EXAMPLEexample0EXAMPLEexample0EXAMPLEexample0",
        "[REDACTED:pypi]"},
    {"pypi", "pip install --index-url https://pypi-simple.example/", "pip install --index-url https://pypi-simple.example/"},
    {"pypi", "py" "pi-AgEIcHlwaS5vcmc", "py" "pi-AgEIcHlwaS5vcmc"},
    /* Docker Hub. */
    {"docker", "docker login -u ci --password-stdin <<< dc" "kr_pat_EXAMPLEexampleEXAMPLE-examp",
        "docker login -u ci --password-stdin <<< [REDACTED:docker]"},
    {"docker", "dc" "kr_oat_EXAMPLEexampleEXAMPLEexample0000", "[REDACTED:docker]"},
    {"docker", "dc" "kr_pat_124509ugsdjga93", "dc" "kr_pat_124509ugsdjga93"},
    /* SendGrid. */
    {"sendgrid", "SENDGRID_API_KEY=S" "G.EXAMPLEexampleEXAMPL00.EXAMPLEexampleEXAMPLEexampleEXAMPLEexample0",
        "SENDGRID_API_KEY=[REDACTED:sendgrid]"},
    {"sendgrid", "cp SG.config.json out/", "cp SG.config.json out/"},
    {"sendgrid", "S" "G.EXAMPLEexampleEXAMPL00.EXAMPLEexampleEXAMPLEexampleEXAMPLE",
        "S" "G.EXAMPLEexampleEXAMPL00.EXAMPLEexampleEXAMPLEexampleEXAMPLE"},
    /* Shopify. */
    {"shopify", "X-Shopify-Access-Token: sh" "pat_0123456789abcdef0123456789abcdef", "X-Shopify-Access-Token: [REDACTED:shopify]"},
    {"shopify", "sh" "pss_0123456789ABCDEF0123456789ABCDEF", "[REDACTED:shopify]"},
    {"shopify", "sh" "pat_0123456789abcdef0123456789abcdeg", "sh" "pat_0123456789abcdef0123456789abcdeg"},
    {"shopify", "sh" "pca_0123456789abcdef0123456789abcde", "sh" "pca_0123456789abcdef0123456789abcde"},
    /* partner (shppa_) and custom app (shpua_) tokens: 32 lower-case hex */
    {"shopify", "SHOPIFY_PARTNER_TOKEN=sh" "ppa_312fec64233035c1fdf47c8f02678256\n",
        "SHOPIFY_PARTNER_TOKEN=[REDACTED:shopify]\n"},
    {"shopify", "{\"access_token\":\"sh" "pua_1587c6f37c6cc4b832f7deff5083c027\",\"scope\":\"read_orders\"}",
        "{\"access_token\":\"[REDACTED:shopify]\",\"scope\":\"read_orders\"}"},
    {"shopify", "sh" "ppa_c22e1d196a138ed74d53a7a9551fd97", "sh" "ppa_c22e1d196a138ed74d53a7a9551fd97"},
    {"shopify", "sh" "ppa_c22e1d196a138ed74d53a7a9551fd975a", "sh" "ppa_c22e1d196a138ed74d53a7a9551fd975a"},
    {"shopify", "sh" "pua_93a3692b1544539a2e43326a96fad48z", "sh" "pua_93a3692b1544539a2e43326a96fad48z"},
    {"shopify", "my_sh" "pua_f790a5627278bd0bfa3c5670424a222e", "my_sh" "pua_f790a5627278bd0bfa3c5670424a222e"},
    {"shopify", "sh" "pua_4d40785433bc1cb74c5edef930c31451_v2", "sh" "pua_4d40785433bc1cb74c5edef930c31451_v2"},
    {"shopify", "the sh" "ppa_token scope", "the sh" "ppa_token scope"},
    /* DigitalOcean. */
    {"digitalocean", "DIGITALOCEAN_TOKEN=do" "p_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "DIGITALOCEAN_TOKEN=[REDACTED:digitalocean]"},
    {"digitalocean", "do" "r_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "[REDACTED:digitalocean]"},
    {"digitalocean", "do" "p_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",
        "do" "p_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"},
    /* OAuth tokens (doo_v1_): 64 lower-case hex */
    {"digitalocean",
        "doctl auth init --access-token do" "o_v1_f34f8ebf76113b42f0b51a42c2e59ebeaff441eb1b922c76562850de614081d7\r\n",
        "doctl auth init --access-token [REDACTED:digitalocean]\r\n"},
    {"digitalocean", "do" "o_v1_fafc79643d4729f6e9243871476a1a1f0813e5799bc7191ed59a286d224dcf76", "[REDACTED:digitalocean]"},
    {"digitalocean",
        "do" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b3",
        "do" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b3"},
    {"digitalocean",
        "do" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b32f",
        "do" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b32f"},
    {"digitalocean",
        "do" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5g32",
        "do" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5g32"},
    {"digitalocean",
        "xdo" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b32",
        "xdo" "o_v1_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b32"},
    {"digitalocean",
        "do" "o_v2_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b32",
        "do" "o_v2_aafc880748500c6d66b9abd17a36ee731024faaf2a9361de9808cea3603a5b32"},
    /* AWS access key ids: AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA + 16 [A-Z2-7]. */
    {"aws", "AK" "IAIOSFODNN7EXAMPLE", "[REDACTED:aws]"},
    {"aws", "id AS" "IAHBDURIYZQJ5UWQIL;", "id [REDACTED:aws];"},
    {"aws", "id AG" "PA5SYT2RGLRTVQAPA6;", "id [REDACTED:aws];"},
    {"aws", "id AI" "DA5YLTJ2COVORGVBMV;", "id [REDACTED:aws];"},
    {"aws", "id AR" "OAVYF6QB7SPACXLG4W;", "id [REDACTED:aws];"},
    {"aws", "id AN" "PAVKZLSVZ34NICLKHW;", "id [REDACTED:aws];"},
    {"aws", "id AN" "VAPLDCIPL2AXOWKGEA;", "id [REDACTED:aws];"},
    {"aws", "id AI" "PAYBANS6Q2YKEL5IYR;", "id [REDACTED:aws];"},
    {"aws",
        "aws_access_key_id = AK" "IAE2SPEVFLZEIMCIJP\n",
        "aws_access_key_id = [REDACTED:aws]\n"},
    {"aws",
        "{\"AccessKeyId\": \"AS" "IAGJYWDM3PWOL2LU2J\", \"Expiration\": \"2030-01-01T00:00:00Z\"}",
        "{\"AccessKeyId\": \"[REDACTED:aws]\", \"Expiration\": \"2030-01-01T00:00:00Z\"}"},
    {"aws", "AWS_ACCESS_KEY_ID=AK" "IAUZDEUT7MJI3PDDSJ", "AWS_ACCESS_KEY_ID=[REDACTED:aws]"},
    /* AWS near misses. */
    {"aws", "AK" "IAshort", "AK" "IAshort"},
    {"aws", "AK" "IAGPSJ4QFITXD6QSC", "AK" "IAGPSJ4QFITXD6QSC"},
    {"aws", "AK" "IAVJL3FDQXV7YXWUUJS", "AK" "IAVJL3FDQXV7YXWUUJS"},
    {"aws", "AK" "IA0123456789ABCDEF", "AK" "IA0123456789ABCDEF"},
    {"aws", "AK" "IAdhetreontcbbvfiQ", "AK" "IAdhetreontcbbvfiQ"},
    {"aws", "XAK" "IAVNLCJZWXPTFQUZI3", "XAK" "IAVNLCJZWXPTFQUZI3"},
    {"aws", "AK" "IAQWLBL77HVLZEIC7P_2", "AK" "IAQWLBL77HVLZEIC7P_2"},
    {"aws", "ABIA4CT2TR5MKFJMHWTU", "ABIA4CT2TR5MKFJMHWTU"},
    {"aws",
        "arn:aws:iam::123456789012:role/AR" "OA-admin",
        "arn:aws:iam::123456789012:role/AR" "OA-admin"},
    /* Google API keys: AIza + 35 [A-Za-z0-9_-]. */
    {"google", "AI" "zaSy9b2tZb_IHE-41LEyV6En6Ho9xC9GCb0Cl", "[REDACTED:google]"},
    {"google",
        "https://maps.googleapis.com/maps/api/js?key=AI"
        "zaSyDacg9i24jZTKSln-cFewaP72VsRe83HEO&callback=init",
        "https://maps.googleapis.com/maps/api/js?key=[REDACTED:google]&callback=init"},
    {"google",
        "GOOGLE_API_KEY: AI" "za7Ne855leaWM4C0HWSKcm354G1Vnqj0TBPIw\n",
        "GOOGLE_API_KEY: [REDACTED:google]\n"},
    /* Google near misses. */
    {"google", "AI" "zaXYZ", "AI" "zaXYZ"},
    {"google",
        "AI" "zaXxS4zbvKAKqTOxNCO1TC6X3oHKt8HW30Dl",
        "AI" "zaXxS4zbvKAKqTOxNCO1TC6X3oHKt8HW30Dl"},
    {"google",
        "AI" "za6jS61DevasAXqVprcKmdN6OXurWgv191T8bo",
        "AI" "za6jS61DevasAXqVprcKmdN6OXurWgv191T8bo"},
    {"google",
        "xAI" "zaxFh4xPKS48F7HLS0qkHPUmULzGjWXp1vTGP",
        "xAI" "zaxFh4xPKS48F7HLS0qkHPUmULzGjWXp1vTGP"},
    {"google",
        "-AI" "zaywPLZKCGVLQSp18BsYt19LhI2dx2Ycuk3LQ",
        "-AI" "zaywPLZKCGVLQSp18BsYt19LhI2dx2Ycuk3LQ"},
    /* npm tokens: npm_ + 36 [A-Za-z0-9]. */
    {"npm", "np" "m_dp1VHZ9o5frFzT3c39CDHN5kwMgcyH9Mdhxh", "[REDACTED:npm]"},
    {"npm",
        "//registry.npmjs.org/:_authToken=np" "m_z4wfGEILWVTqcvhUrT9g2BiefrcOvHrBZnOI\n",
        "//registry.npmjs.org/:_authToken=[REDACTED:npm]\n"},
    {"npm",
        "NPM_TOKEN=np" "m_b1TmTW1e3bdbGzLGtCqAObJTFezZ1ZyDn7cX npm publish",
        "NPM_TOKEN=[REDACTED:npm] npm publish"},
    /* npm near misses: npm_config_* and friends. */
    {"npm", "np" "m_config_cache=/home/u/.npm", "np" "m_config_cache=/home/u/.npm"},
    {"npm", "np" "m_package_version=1.2.3", "np" "m_package_version=1.2.3"},
    {"npm", "np" "m_lifecycle_event", "np" "m_lifecycle_event"},
    {"npm",
        "np" "m_FtcgaP69rmKJEcGte0OpmzpDuFRYyz4wG1K",
        "np" "m_FtcgaP69rmKJEcGte0OpmzpDuFRYyz4wG1K"},
    {"npm",
        "np" "m_KiKCEzpOzcsIK8yAOoX9wmLBvHZZXF3Z2ANmc",
        "np" "m_KiKCEzpOzcsIK8yAOoX9wmLBvHZZXF3Z2ANmc"},
    {"npm",
        "pnp" "m_RtmYuiLIK4KuJeEZnjh2ikiYuI0kZ2fUZoFW",
        "pnp" "m_RtmYuiLIK4KuJeEZnjh2ikiYuI0kZ2fUZoFW"},
    /* OpenAI keys: sk-proj-/sk-svcacct-/sk-admin- + 20..200 [A-Za-z0-9_-]; sk- + 48 [A-Za-z0-9]. */
    {"openai",
        "sk"
        "-proj-N_WKNDozsq3gq8iJIfFFHIue9tTbXUFrYyfe1dKeKCEBG4ypekt905BfZU0ONfc6RazG7kddFr"
        "T3BlbkFJwn_GUNNBJMWBWm4Co6WcxZECX2ke0wMd4F323-M6cM_RgKstWZ9CxqvH3YSMsVCDjAOwtmh2"
        "zm",
        "[REDACTED:openai]"},
    {"openai",
        "OPENAI_API_KEY=sk" "-proj-MV26r5Z0BBmOQWmscltLEAeelgmX8769uNfwmgagTfHiKlCW\n",
        "OPENAI_API_KEY=[REDACTED:openai]\n"},
    {"openai",
        "sk" "-svcacct-sC4bBB97etyXwLTZ10NLnJqrFxPD2rj2qj2rQcG0f6kM2BZ2v9kw53HPgyG1",
        "[REDACTED:openai]"},
    {"openai", "sk" "-admin-5jsqKozThy94wa6lhhT1 ", "[REDACTED:openai] "},
    {"openai", "sk" "-P2aV1qS9wI9DEZMGsZuNT3BlbkFJwMEcFzPnZiv7R7O2zROE", "[REDACTED:openai]"},
    {"openai",
        "api_key=\"sk" "-RRm9STut24Hxmqa9kNRli7jYZleq5VInbDPNKaSvqYCGqk9w\"",
        "api_key=\"[REDACTED:openai]\""},
    /* OpenAI near misses: words and package names that share sk-. */
    {"openai", "pip install sk" "-learn", "pip install sk" "-learn"},
    {"openai", "scikit-learn==1.5.0", "scikit-learn==1.5.0"},
    {"openai", "task" "-list", "task" "-list"},
    {"openai", "disk" "-usage: 93%", "disk" "-usage: 93%"},
    {"openai",
        "sk" "-G7vbKSOKdrHwzaqsoDeTFoeiqABISfNd7eWLdt4ktVP76QI",
        "sk" "-G7vbKSOKdrHwzaqsoDeTFoeiqABISfNd7eWLdt4ktVP76QI"},
    {"openai",
        "sk" "-DpyYWoUNjntbZ7bhqSd1kb6tRL3YTHo5OdUeePxLwnRJyqpqK",
        "sk" "-DpyYWoUNjntbZ7bhqSd1kb6tRL3YTHo5OdUeePxLwnRJyqpqK"},
    {"openai",
        "sk" "-nSD6atqgkiucv8mA5ljdUFEewFanAJWccR4AKi64CYfAPqhw-x",
        "sk" "-nSD6atqgkiucv8mA5ljdUFEewFanAJWccR4AKi64CYfAPqhw-x"},
    {"openai", "sk" "-proj-short", "sk" "-proj-short"},
    {"openai",
        "sk"
        "-proj-AsMAuYP6HAhPMe6tce5Xc-fCUsFvzSHDeiOFcYoRcRT_TtasSrDwtr8cQAlw1XJnMdIQJY_XWr"
        "9D9ioVglI_wXd-hgA4KXW5g7KB6z8gpS_Bm2BKgWzivldSyWWptI7uLU9EAZCNOYNkIcWB5xISXhidAe"
        "HVwjSli5wZL7xmjWSww4zHgNM-x9ChiFD1L0rqoBGZ_va9z",
        "sk"
        "-proj-AsMAuYP6HAhPMe6tce5Xc-fCUsFvzSHDeiOFcYoRcRT_TtasSrDwtr8cQAlw1XJnMdIQJY_XWr"
        "9D9ioVglI_wXd-hgA4KXW5g7KB6z8gpS_Bm2BKgWzivldSyWWptI7uLU9EAZCNOYNkIcWB5xISXhidAe"
        "HVwjSli5wZL7xmjWSww4zHgNM-x9ChiFD1L0rqoBGZ_va9z"},
    {"openai",
        "ask" "-bQGCSOcYcQdaT3TfF3sqLOhM8iZDLVQ0oN0RWBsF9FAIiQg4",
        "ask" "-bQGCSOcYcQdaT3TfF3sqLOhM8iZDLVQ0oN0RWBsF9FAIiQg4"},
    /* Anthropic keys: sk-ant- + 80..200 [A-Za-z0-9_-], never reported as openai. */
    {"anthropic",
        "sk"
        "-ant-api03-wERU-fdK2CF4K3Vx8BkMy5BkBPuhGtg66VWaRObx2yjjlLeHFsASG39MiPeopMmuaaOAO"
        "sWXQudI9WHDkoOpBThFgmFn_AA",
        "[REDACTED:anthropic]"},
    {"anthropic",
        "ANTHROPIC_API_KEY=sk"
        "-ant-api03-grd-ps-MF1HhxPhPdivWlvYpv_O4SVB_ECZ9AGHnTlLa8z9qbAepbXXwsZGoX-bXrHNSP"
        "v4R2fan6BJAQl9uDTU05y-eFAA\n",
        "ANTHROPIC_API_KEY=[REDACTED:anthropic]\n"},
    {"anthropic",
        "x-api-key: sk"
        "-ant-admin01-r0lojKUr3pLC8dweEWpUOKQ44UI_yXcydsqdoBJ7gmULBQ-7S1zBfb-sqeOXkWErmRL"
        "t43YdNQs4zxihaBivERTtDtLqDAA",
        "x-api-key: [REDACTED:anthropic]"},
    {"anthropic",
        "sk"
        "-ant-oat01-NdPg7FXPkqfQgpnqduubCRxODOmtRuH_Xb45aL02UoebEhaOgsz10AoEMroFiOCmTN_jS"
        "70n4e",
        "[REDACTED:anthropic]"},
    /* Anthropic near misses. */
    {"anthropic", "sk" "-ant-short", "sk" "-ant-short"},
    {"anthropic",
        "sk" "-ant-api03-_Juq8dj0KZyncOCsKZYLojF8n45jfIEdI3yy4Svv-WtT2KgdZUkJFT8O0aYL",
        "sk" "-ant-api03-_Juq8dj0KZyncOCsKZYLojF8n45jfIEdI3yy4Svv-WtT2KgdZUkJFT8O0aYL"},
    {"anthropic",
        "sk"
        "-ant-api03-BtulZy7poR1DB4dtMhIoS3FXafMXj8hAZstIO410XTI1tBR-BuvXTQxkA9FafX3rNdrm7"
        "q5zB1IHMiJsAymQWgiB7D5sdabz5pgsFrewejGxlKFxq66H40DIw2uidmHbI02sx0uMHb2QJW6kkGY6h"
        "-p6hVmwKzGqPgLtJxbOiFF9pGweedNdtDiH9r4yHx3hx9UziI-m",
        "sk"
        "-ant-api03-BtulZy7poR1DB4dtMhIoS3FXafMXj8hAZstIO410XTI1tBR-BuvXTQxkA9FafX3rNdrm7"
        "q5zB1IHMiJsAymQWgiB7D5sdabz5pgsFrewejGxlKFxq66H40DIw2uidmHbI02sx0uMHb2QJW6kkGY6h"
        "-p6hVmwKzGqPgLtJxbOiFF9pGweedNdtDiH9r4yHx3hx9UziI-m"},
    /* JWTs: eyJ.. '.' eyJ.. '.' signature (may be empty). */
    {"jwt",
        "eyJ"
        "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG"
        "9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "[REDACTED:jwt]"},
    {"jwt",
        "The token is eyJ"
        "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG"
        "9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c.",
        "The token is [REDACTED:jwt]."},
    {"jwt",
        "https://app.example.com/cb?id_token=eyJ"
        "b7xj_8-1TCXH9OEV5L-hI9YzSLAyRK.eyJL1x2GzEQ7DvP7Y36zGPwJWkeznSmV4SbGcow8Ew7Xov4yo"
        "QfExGmtp8ju5gTnyK7F0ZHuI3hmZoOpiKNeun8N9Fp0u_Wrfan8I8kUd0kqZjlRw4GDpNbzPrN.v4RkT"
        "XQbNEmb9r7dX1H0LtTzG5-JBCU54tJ4bE7GvSh&state=xyz",
        "https://app.example.com/cb?id_token=[REDACTED:jwt]&state=xyz"},
    {"jwt",
        "{\"access_token\":\"eyJ"
        "FeNyA318KymgP4Bcs_KvgJb4CuPCK8.eyJOGiaNBQ5jPqgrXmScKaS4HfcjLOY-6kmcSoqUAJ2Q3CFk1"
        "N5KgSS5EbgkPjGUGJkHvFPWOzCXg8lOsrtToVEKrd1tOVKL8bGx7WQsIFJpyNqGASRVHKUN2Uk.Y4p5G"
        "WXYdc1fkTrIeWJf8m9361Skuyd4B_aSQxjIYEs\",\"token_type\":\"Bearer\"}",
        "{\"access_token\":\"[REDACTED:jwt]\",\"token_type\":\"Bearer\"}"},
    {"jwt",
        "unsigned: eyJ" "hbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9. done",
        "unsigned: [REDACTED:jwt] done"},
    {"jwt",
        "KUBE_TOKEN=eyJ"
        "Hnmhuc4RfHd5VdVNr8iFT7ogDT2gnV.eyJTto8MEaXP3IlVw5st--Zl5lqryMMyCTwJz4H2fmMqxSNkq"
        "EjABSxj3ge_Bt--wzExnyI8rRwv3em-vbtSQG7XWw1ZKcdXDHd42M0ug-z-pkVMmjhgQ9iUm9c.dvorV"
        "9dJ2PkLQV_DqTQPtBR2aq-8GQF563FAz4-LRym\n",
        "KUBE_TOKEN=[REDACTED:jwt]\n"},
    /* JWT near misses. */
    {"jwt", "eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9"},
    {"jwt", "eyJhbGciOiJIUzI1NiJ9.notjsonatall.sig", "eyJhbGciOiJIUzI1NiJ9.notjsonatall.sig"},
    {"jwt", "eyJabc.eyJdef.ghi", "eyJabc.eyJdef.ghi"},
    {"jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0 and more",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0 and more"},
    {"jwt",
        "xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc",
        "xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc"},
    {"jwt",
        "data:application/json;base64,eyJuYW1lIjoiYWNtZSIsInZlcnNpb24iOiIxLjAuMCJ9",
        "data:application/json;base64,eyJuYW1lIjoiYWNtZSIsInZlcnNpb24iOiIxLjAuMCJ9"},
    /* PEM private keys, BEGIN to END across lines; unterminated: to the end of the stream. */
    {"private_key",
        "--"
        "---BEGIN "
        "RSA PRIVATE KEY-----\nn+p+mHUrrMxf391/pha0DWLYqRqOMeA0ChR0wuBuPO0YJuTdx8C9/ZqhdJ"
        "yvkHYR\nKmkmA4VKRwgvgyUF7ZCQZ+bqMZyU4RRpGBLwuqRyiAMpYKv7+smTEoE7AjLKiOAx\n"
        "8+x5P803LpwB4HzEOUTr59z2DpJVobKhAlwE5NfMb/Lt2DR8uwVgAi1ga1GqGczY\n"
        "dOFwHqWAKxkyCKvXI/8TxZQ3PFIF9SQm0hC94Ulgq3XC3gPRi6Eow4LHOdvQmrOu\n"
        "-----END RSA PRIVATE KEY-----",
        "[REDACTED:private_key]"},
    {"private_key",
        "key:\n--"
        "---BEGIN "
        "PRIVATE KEY-----\nJj45hLPvXRTQTdc5Oq+R/GGgtpXA86NCRrbFnmLPtkhrRTkGemv6LobMA6lF1j"
        "Lp\nNcu3hrL+4mByL6vWKG8j/04uTORJspFlBNwMRGu5jTU6pqcTh346I4qJubLtbURD\n"
        "ArJ8hKVFW2XmZcgKz8kehjLg9yXtntwTTQjQWm0/KvTxRwOwv0G0dEZflU+JdLTm\n"
        "-----END PRIVATE KEY-----\nnext line\n",
        "key:\n[REDACTED:private_key]\nnext line\n"},
    {"private_key",
        "--"
        "---BEGIN "
        "EC PRIVATE KEY-----\nyxeem/xmPNfnlSRF7Qx0Hgf8vXnr6S2FP5UINPf97sr3ZAXqurfCkvYPZgy"
        "lRnqF\nH+dpl8iIeEvpx/gQ9Ad9xGZB+RSM0fgWrazhQSVdvOIRNaH4ffsOb2dPOvLBwEnZ\n"
        "-----END EC PRIVATE KEY-----\n",
        "[REDACTED:private_key]\n"},
    {"private_key",
        "--"
        "---BEGIN "
        "DSA PRIVATE KEY-----\nX1dtghC5H0nQjs5vdVuAQTrh87hsk7Lg6s0FAQngVIvl3uwiqM4Hu0QbA2"
        "gZ/D5x\nX7/cP+rZdJS3a+vvfMY0J5v+5/Ulvx/chxZOTdSjEvyToCE8b7XGP3fvSHeLMfRv\n"
        "-----END DSA PRIVATE KEY-----",
        "[REDACTED:private_key]"},
    {"private_key",
        "$ cat id_ed25519\n--"
        "---BEGIN "
        "OPENSSH PRIVATE KEY-----\nsfTL46acip7IqHAwqvMm0xOFZ07qvtRNqrYPwc3lAPm68fdDGEhnTi"
        "UHcBInuVfLKxd6aL\nCQkxzWju811xgHFt6NRdChHaxdZ8hCv4Artqlz+WBU7POQnvZUAqrbzqGG+SGi"
        "ubdr6GaK\ns0b4wG5u9WjaNvCSEvTDfH12HNRz0ty8P71ZKeZ63YCwrR74QbuzqT5jUCFVy3GNdZGowO"
        "\nQaZl4wqVq6ApS4OCABSSz+79PiCfy4b9gbhJBtbnERVcvL3Usy++cUcjrXHwVXZj9gxDsK\n"
        "BjWzBWKugCYMsYWy2FWSuYjilFGdWibtgEUJkEUzyOpGnCQteO5W7WFxAWaWXHoStI51vd\n"
        "-----END OPENSSH PRIVATE KEY-----\n$ ",
        "$ cat id_ed25519\n[REDACTED:private_key]\n$ "},
    {"private_key",
        "--"
        "---BEGIN "
        "ENCRYPTED PRIVATE KEY-----\nAL0USTkIKuaJ60sW3CJlsnh41a/BSJh66w7GJj3qC6SxlXX/Sheh"
        "0TaMd1FP580C\nZZ1nROGxKCw18U1gQzq2Y3j5OLpYH6m2NWOJLDt6xnyB8cg7t1mGBd8wjVApMtcO\n"
        "6/IkWPZpnomOVr8JW+F4U190CCc7BMQpDybIO9zeiSqTkxP5bFLEzCvOKypFjHCa\n"
        "-----END ENCRYPTED PRIVATE KEY-----",
        "[REDACTED:private_key]"},
    {"private_key",
        "--"
        "---BEGIN "
        "RSA PRIVATE KEY-----\r\nProc-Type: 4,ENCRYPTED\r\n"
        "DEK-Info: AES-128-CBC,0123456789ABCDEF0123456789ABCDEF\r\n\r\n"
        "TtxWWn3yx16jPxsmaxKYpSikYHtdPqxoY7a1nVFRgJyu2AkTlgjjijmuBn+3qTSD\r\n"
        "zz0+sYWRLDshQ/GjTYdVHVFT+UK3otRv7dX1AXRTWUm0cv5wVXcAwCchwAOQnOSq\r\n"
        "-----END RSA PRIVATE KEY-----\r\n",
        "[REDACTED:private_key]\r\n"},
    {"private_key",
        "{\"type\": \"service_account\", \"private_key\": \"--"
        "---BEGIN "
        "PRIVATE KEY-----\\nPdO9SG/YraljsdEP30SXfVKgp/R/IDBe4jqP5qZPP8SBNaupOKWJwMALc0Laz"
        "iY4\\nbt/ovrnUaiQ2muTSerx7gzkZhUDUuGEPV7KCRDjh\\n-----END PRIVATE KEY-----\\n"
        "\", \"client_email\": \"x@p.iam.gserviceaccount.com\"}",
        "{\"type\": \"service_account\", \"private_key\": \"[REDACTED:private_key]\\n"
        "\", \"client_email\": \"x@p.iam.gserviceaccount.com\"}"},
    {"private_key",
        "--"
        "---BEGIN "
        "RSA PRIVATE KEY-----\nMgvqBUsTkp3danTyFFVAQ0EqV5DYkhuoonOM/OYYdLdG3DVpI9Cfx5d7W4"
        "cR1ZIP\nzu/ELPcZVphL7BQm+aNb342u5OdlMC8hXy/sq1sPRGv+57oNIlkI2Ged8sAi3+KG\n"
        "-----END PRIVATE KEY-----",
        "[REDACTED:private_key]"},
    {"private_key",
        "head -3 key.pem:\n--"
        "---BEGIN "
        "PRIVATE KEY-----\njAKstNQFGgM7e8YbWcE4SvVbnRb3oE96QGQ7ovGRsjdSfc92XBTcb8ru2D8GvN"
        "iW\nKfEYtUJoqW5h+QKg6RdZn2zPIC4yQWg01M53NMe4Y26g1NCVbc7QT/gVvje9jgbE\n",
        "head -3 key.pem:\n[REDACTED:private_key]\n"},
    {"private_key",
        "x--"
        "---BEGIN "
        "PRIVATE KEY-----\nmwy2M1DUDzjt4dy8Cz4MVVBi0hTSZzS8p8wQB3fwQNwmX/NtQ6EPsd1kogoDcL"
        "GW\n-----END PRIVATE KEY-----y",
        "x[REDACTED:private_key]y"},
    /* PEM near misses: public material and mentions. */
    {"private_key",
        "--"
        "---BEGIN PUBLIC KEY-----\nTbC+B4HFec64VU1ZG6iM7AVYCIp7LzeqPDg3x8hKuGaGDqYO9gW62W"
        "nRnzMdwibe\n+MjjFN6kKPf4tfj6UfXPyc94XWp2tBzLFVrZBANlUIfvLP8pvEXNt+Z/UWpKFkay\n"
        "pupL0YfmY21ZTTOPqVCyY9UtySd+atADPpjUjKxok+OG96dpkBWpV2v7T2YsqQMa\n"
        "-----END PUBLIC KEY-----\n",
        "--"
        "---BEGIN PUBLIC KEY-----\nTbC+B4HFec64VU1ZG6iM7AVYCIp7LzeqPDg3x8hKuGaGDqYO9gW62W"
        "nRnzMdwibe\n+MjjFN6kKPf4tfj6UfXPyc94XWp2tBzLFVrZBANlUIfvLP8pvEXNt+Z/UWpKFkay\n"
        "pupL0YfmY21ZTTOPqVCyY9UtySd+atADPpjUjKxok+OG96dpkBWpV2v7T2YsqQMa\n"
        "-----END PUBLIC KEY-----\n"},
    {"private_key",
        "--"
        "---BEGIN CERTIFICATE-----\n37vr+6hEHu86inU/qxlnO6zYyHcSQuWAej0WwIQ+gO0uVATz89B1B"
        "au2RJrkvAyg\nvNJghW8oUEx4NJMW/rDkF21OYdGPYAHm0mfiIKar2Qm4ZWGYbPy02n6/LOlSV8qU\n"
        "ZchprNSREmr7k4AQTRm1DYuZXH/b/igah53u4Uay12zdnZUejDdy66DwhDuevXrC\n"
        "-----END CERTIFICATE-----\n",
        "--"
        "---BEGIN CERTIFICATE-----\n37vr+6hEHu86inU/qxlnO6zYyHcSQuWAej0WwIQ+gO0uVATz89B1B"
        "au2RJrkvAyg\nvNJghW8oUEx4NJMW/rDkF21OYdGPYAHm0mfiIKar2Qm4ZWGYbPy02n6/LOlSV8qU\n"
        "ZchprNSREmr7k4AQTRm1DYuZXH/b/igah53u4Uay12zdnZUejDdy66DwhDuevXrC\n"
        "-----END CERTIFICATE-----\n"},
    {"private_key",
        "--"
        "---BEGIN RSA PUBLIC KEY-----\nrol2x7RCiOObAZjffHOxUAqmEDaU+CgL7FeDs4Emhqgv4YEolH"
        "CLNR8j/sfnrWoF\n-----END RSA PUBLIC KEY-----",
        "--"
        "---BEGIN RSA PUBLIC KEY-----\nrol2x7RCiOObAZjffHOxUAqmEDaU+CgL7FeDs4Emhqgv4YEolH"
        "CLNR8j/sfnrWoF\n-----END RSA PUBLIC KEY-----"},
    {"private_key",
        "--" "---BEGIN OPENSSH PUBLIC KEY-----",
        "--" "---BEGIN OPENSSH PUBLIC KEY-----"},
    {"private_key", "expected BEGIN PRIVATE KEY marker", "expected BEGIN PRIVATE KEY marker"},
    {"private_key", "--" "---BEGIN PRIVATE KEY", "--" "---BEGIN PRIVATE KEY"},
    {"private_key", "-----END PRIVATE KEY-----", "-----END PRIVATE KEY-----"},
    /* URL userinfo with a password: only the userinfo is redacted. */
    {"url_credentials",
        "https:" "//user:pass@example.com/path",
        "https://[REDACTED:url_credentials]@example.com/path"},
    {"url_credentials",
        "postgres:" "//admin:s3cr3t@db.internal:5432/app",
        "postgres://[REDACTED:url_credentials]@db.internal:5432/app"},
    {"url_credentials",
        "mongodb+srv:" "//app:Zx9-pw@cluster0.mongodb.net/?retryWrites=true",
        "mongodb+srv://[REDACTED:url_credentials]@cluster0.mongodb.net/?retryWrites=true"},
    {"url_credentials",
        "redis:" "//:hunter2@localhost:6379/0",
        "redis://[REDACTED:url_credentials]@localhost:6379/0"},
    {"url_credentials", "https:" "//user:p@ss@host/x", "https://[REDACTED:url_credentials]@host/x"},
    {"url_credentials",
        "git clone https:" "//oauth2:gl" "pat-N6g3kjtciyN7w1rs1APf@gitlab.com/g/p.git\n",
        "git clone https://[REDACTED:url_credentials]@gitlab.com/g/p.git\n"},
    {"url_credentials",
        "https:" "//x-access-token:gh" "s_SmNWXeniNwnvphKgsyXsXGdx6aQQqtlLvrRR@github.com/o/r",
        "https://[REDACTED:url_credentials]@github.com/o/r"},
    {"url_credentials", "amqp:" "//guest:guest@rabbit", "amqp://[REDACTED:url_credentials]@rabbit"},
    {"url_credentials",
        "ftp:" "//anon:mail%40x.org@ftp.example.org/pub",
        "ftp://[REDACTED:url_credentials]@ftp.example.org/pub"},
    {"url_credentials",
        "{\"url\":\"https:" "//u:pw@h\",\"mail\":\"a@b.c\"}",
        "{\"url\":\"https://[REDACTED:url_credentials]@h\",\"mail\":\"a@b.c\"}"},
    {"url_credentials",
        "http:" "//u:p@[::1]:8080/",
        "http://[REDACTED:url_credentials]@[::1]:8080/"},
    {"url_credentials",
        "proxy=http:" "//proxyuser:proxypass@proxy:3128 ok",
        "proxy=http://[REDACTED:url_credentials]@proxy:3128 ok"},
    {"url_credentials",
        "<a href=\"https:" "//a:b@x.org\">",
        "<a href=\"https://[REDACTED:url_credentials]@x.org\">"},
    {"url_credentials",
        "https:" "//user:pa:ss@host?q=1",
        "https://[REDACTED:url_credentials]@host?q=1"},
    /* URL near misses: no password, no userinfo, no ://. */
    {"url_credentials", "https://github.com/a/b", "https://github.com/a/b"},
    {"url_credentials", "ssh://git@github.com/a/b", "ssh://git@github.com/a/b"},
    {"url_credentials", "ssh://git@github.com:22/a/b.git", "ssh://git@github.com:22/a/b.git"},
    {"url_credentials", "git@github.com:a/b.git", "git@github.com:a/b.git"},
    {"url_credentials", "https://user@host/", "https://user@host/"},
    {"url_credentials", "https://user:@host/", "https://user:@host/"},
    {"url_credentials", "https://host:8080/path", "https://host:8080/path"},
    {"url_credentials", "http://localhost:3000", "http://localhost:3000"},
    {"url_credentials", "https://example.com/?email=a:b@c", "https://example.com/?email=a:b@c"},
    {"url_credentials", "https://${USER}:${PASSWORD}@host/", "https://${USER}:${PASSWORD}@host/"},
    {"url_credentials", "file:///etc/passwd", "file:///etc/passwd"},
    {"url_credentials",
        "see https://example.com:443 then mail a:b@c",
        "see https://example.com:443 then mail a:b@c"},
    {"url_credentials", "https://example.com#frag:x@y", "https://example.com#frag:x@y"},
    {"url_credentials",
        "\"resolved\": \"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz\"",
        "\"resolved\": \"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz\""},
    /* Authorization and Proxy-Authorization values, scheme kept, to the end of the line. */
    {"authorization",
        "Authorization: Bearer a" "bc.def-123",
        "Authorization: Bearer [REDACTED:authorization]"},
    {"authorization",
        "> Authorization: Basic d" "XNlcjpwYXNzd29yZA==\r\n",
        "> Authorization: Basic [REDACTED:authorization]\r\n"},
    {"authorization",
        "> authorization: bearer 0" "123456789abcdef\r\n",
        "> authorization: bearer [REDACTED:authorization]\r\n"},
    {"authorization",
        "Proxy-Authorization: Basic Z" "m9vOmJhcg==\n",
        "Proxy-Authorization: Basic [REDACTED:authorization]\n"},
    {"authorization",
        "> proxy-authorization: Basic Z" "m9vOmJhcg==\r\n",
        "> proxy-authorization: Basic [REDACTED:authorization]\r\n"},
    {"authorization",
        "AUTHORIZATION: token gh" "p_9ngfgfrpAXg9eiOBvZd5QWtv8g7oEpUl378p",
        "AUTHORIZATION: token [REDACTED:authorization]"},
    {"authorization",
        "Authorization: gh" "p_aAe9Fw9rs1N9izcWWIbHrr7mTq01yHafDfSJ\n",
        "Authorization: [REDACTED:authorization]\n"},
    {"authorization",
        "Authorization: Digest username=\"u\", realm=\"r\", nonce=\"d"
        "cd98b7102dd2f0e\", response=\"6629fae49393a053\"",
        "Authorization: Digest [REDACTED:authorization]"},
    {"authorization",
        "Authorization: Bearer a" "bc123   \nnext",
        "Authorization: Bearer [REDACTED:authorization]   \nnext"},
    {"authorization",
        "curl -H 'Authorization: Bearer a" "bc123' https://api.example.com",
        "curl -H 'Authorization: Bearer [REDACTED:authorization]' https://api.example.com"},
    {"authorization",
        "curl -H \"Authorization: token a" "bc123\" -sS x",
        "curl -H \"Authorization: token [REDACTED:authorization]\" -sS x"},
    {"authorization",
        "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t" "0k3n\r\nAccept: */*\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer [REDACTED:authorization]\r\n"
        "Accept: */*\r\n\r\n"},
    {"authorization",
        "Authorization:Bearer a" "bc",
        "Authorization:Bearer [REDACTED:authorization]"},
    {"authorization",
        "Authorization: \tBearer\ta" "bc\t",
        "Authorization: \tBearer\t[REDACTED:authorization]\t"},
    {"authorization",
        "Authorization: AWS4-HMAC-SHA256 Credential=AK"
        "IAIOSFODNN7EXAMPLE/20240101/us-east-1/s3/aws4_request, Signature=3b3878c9140b787"
        "1ebf146061bb5ba05a09da2f63fc27fa05ec5455da26c1663",
        "Authorization: AWS4-HMAC-SHA256 [REDACTED:authorization]"},
    {"authorization", "Authorization: r" "awtokenvalue", "Authorization: [REDACTED:authorization]"},
    /* a scheme word alone carries no credentials */
    {"authorization", "Authorization: Bearer", "Authorization: Bearer"},
    {"authorization",
        "h1: a,Authorization: Basic e" "Dp5",
        "h1: a,Authorization: Basic [REDACTED:authorization]"},
    {"authorization",
        "<pre>Authorization: Bearer z" "zz</pre>",
        "<pre>Authorization: Bearer [REDACTED:authorization]"},
    {"authorization",
        "  authorization: Bearer y" "aml-token-1\n  accept: json\n",
        "  authorization: Bearer [REDACTED:authorization]\n  accept: json\n"},
    /* Authorization near misses: value-less, prose, other header names. */
    {"authorization", "Authorization: ", "Authorization: "},
    {"authorization", "Authorization:\n", "Authorization:\n"},
    {"authorization", "Authorization: Bearer \r\n", "Authorization: Bearer \r\n"},
    {"authorization",
        "The Authorization header carries the credentials.",
        "The Authorization header carries the credentials."},
    {"authorization", "x-authorization: abc", "x-authorization: abc"},
    {"authorization", "preauthorization: required", "preauthorization: required"},
    {"authorization",
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"api\"\r\n",
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"api\"\r\n"},
    /* Content hashes, encodings, paths and words pass unchanged. */
    {"none",
        "commit c6b887cfae2a3dc40b423cfa3905f836a2bc71f7",
        "commit c6b887cfae2a3dc40b423cfa3905f836a2bc71f7"},
    {"none",
        "Merge: 9c5e9b8 77873ed\nAuthor: A U Thor <author@example.com>",
        "Merge: 9c5e9b8 77873ed\nAuthor: A U Thor <author@example.com>"},
    {"none",
        "53d5d00fd7f5704cfe3bf1263ee3fa37eec63e0f refs/heads/main",
        "53d5d00fd7f5704cfe3bf1263ee3fa37eec63e0f refs/heads/main"},
    {"none",
        "70cf19c70400f13fa906ddb3bb7771cfbd8bd675e56959ed89cbc6aa1c9599b6  sbxrun-1.0.0.tar.gz",
        "70cf19c70400f13fa906ddb3bb7771cfbd8bd675e56959ed89cbc6aa1c9599b6  sbxrun-1.0.0.tar.gz"},
    {"none",
        "sha256:b85ab3ba29d29b73d20e3f15dcfa36a4521a112c88e6943a66531f1243f8acc1",
        "sha256:b85ab3ba29d29b73d20e3f15dcfa36a4521a112c88e6943a66531f1243f8acc1"},
    {"none",
        "ghcr.io/acme/app@sha256:ec53d4ae72598161f20c1c23e14055456c1f0c6bc55066527a1760aee1498aa3",
        "ghcr.io/acme/app@sha256:ec53d4ae72598161f20c1c23e14055456c1f0c6bc55066527a1760aee1498aa3"},
    {"none",
        "--hash=sha256:54d33f696f715a5cca5928daef26cb3f5ae38b34e14a952e511e31b12e312467",
        "--hash=sha256:54d33f696f715a5cca5928daef26cb3f5ae38b34e14a952e511e31b12e312467"},
    {"none", "550e8400-e29b-41d4-a716-446655440000", "550e8400-e29b-41d4-a716-446655440000"},
    {"none",
        "{\"id\": \"53444298-af88-42df-aad2-8383c34d4ccc\"}",
        "{\"id\": \"53444298-af88-42df-aad2-8383c34d4ccc\"}"},
    {"none",
        "\"integrity\": \"sha512-kMk/nXGXqpxYg/KpTiM2P2tMZjz4VnUM+CUrVKaSuyZezSTcYUo17UDq"
        "mfGmHtMRZTc4i/rQIw75VYsqpJp7qU==\"",
        "\"integrity\": \"sha512-kMk/nXGXqpxYg/KpTiM2P2tMZjz4VnUM+CUrVKaSuyZezSTcYUo17UDq"
        "mfGmHtMRZTc4i/rQIw75VYsqpJp7qU==\""},
    {"none",
        "\"integrity\": \"sha1-IhAsAEaoRpi4goqklnUi4fYZDje=\"",
        "\"integrity\": \"sha1-IhAsAEaoRpi4goqklnUi4fYZDje=\""},
    {"none",
        "golang.org/x/sys v0.20.0 h1:/XV4K5zA0nesFw7gqjUiKXZ222sgNqeVBud7O769OXC=",
        "golang.org/x/sys v0.20.0 h1:/XV4K5zA0nesFw7gqjUiKXZ222sgNqeVBud7O769OXC="},
    {"none",
        "f/0dQRWFCg1eypPlRviG1ZLVSafs8aS46c7TzoDFjJ+D9HCWXagfG3qDiR79BQ2uXncnvevDEycN\n"
        "dyUt7yZ0vR2PFMlS+twzWfDekFB7kfWWzGbABRLnucAuTB+f3j51vQDMvUJ59qi2LcvnFIeLppda\n"
        "DHIjkitOFUABaYafz+Cmrz8UqjENiiJv0Efx7duB==",
        "f/0dQRWFCg1eypPlRviG1ZLVSafs8aS46c7TzoDFjJ+D9HCWXagfG3qDiR79BQ2uXncnvevDEycN\n"
        "dyUt7yZ0vR2PFMlS+twzWfDekFB7kfWWzGbABRLnucAuTB+f3j51vQDMvUJ59qi2LcvnFIeLppda\n"
        "DHIjkitOFUABaYafz+Cmrz8UqjENiiJv0Efx7duB=="},
    {"none",
        "3cqrjTAzY_fT-KN3aMrwLojly0xN9cM7RV19HSoPn6NhO2XqaOKKp0y3nMAGkKUIXO2r-_o1lQJ8iGm5"
        "ManizGah7sbhGR0NEJ6FIFyLeEhOqxEw0J4j1f6KlU6Y-OIF1gCcnLfXI79d3vhqDMUhYGiy8W2Ly_9y"
        "khNP9_ph35_tkeoAv0rjUTo5TErN-gULvSk0fPjW",
        "3cqrjTAzY_fT-KN3aMrwLojly0xN9cM7RV19HSoPn6NhO2XqaOKKp0y3nMAGkKUIXO2r-_o1lQJ8iGm5"
        "ManizGah7sbhGR0NEJ6FIFyLeEhOqxEw0J4j1f6KlU6Y-OIF1gCcnLfXI79d3vhqDMUhYGiy8W2Ly_9y"
        "khNP9_ph35_tkeoAv0rjUTo5TErN-gULvSk0fPjW"},
    {"none",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI1Vm2cc2tavukIJPNs66BbErNauXaf6v8wUMjvZwkPle"
        " user@host",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI1Vm2cc2tavukIJPNs66BbErNauXaf6v8wUMjvZwkPle"
        " user@host"},
    {"none",
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQUBeMLoZC4dYI5SRHYjR2fH75ul+sEXW6X2OxkYbQDU"
        "umiBmnosbZo7vE8TEESH/AjuqLO7A+V5de9ldHadfmiZswzbNTECIy1fq9BD7MPZ8TwRdzeRi8W5Q4MC"
        "mhDujXvhjxj0X1RKMkJxj9SzmaYSKn07UHVymjspY3ATYTToOob2wriiaDv7kpyjojVOT+rOhauAW+OR"
        "K8G6dCOVQ7N/c5szUJc+ATUfEctUkI9L+NsbJhiAWEnPSL1SYYg+N4dcY3xfr1iGz8WtA222wXV03ZHu"
        "V+0fzwTCeS/ttqdw/j me@laptop",
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQUBeMLoZC4dYI5SRHYjR2fH75ul+sEXW6X2OxkYbQDU"
        "umiBmnosbZo7vE8TEESH/AjuqLO7A+V5de9ldHadfmiZswzbNTECIy1fq9BD7MPZ8TwRdzeRi8W5Q4MC"
        "mhDujXvhjxj0X1RKMkJxj9SzmaYSKn07UHVymjspY3ATYTToOob2wriiaDv7kpyjojVOT+rOhauAW+OR"
        "K8G6dCOVQ7N/c5szUJc+ATUfEctUkI9L+NsbJhiAWEnPSL1SYYg+N4dcY3xfr1iGz8WtA222wXV03ZHu"
        "V+0fzwTCeS/ttqdw/j me@laptop"},
    {"none", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"},
    {"none",
        "./node_modules/.bin/tsc --project tsconfig.json",
        "./node_modules/.bin/tsc --project tsconfig.json"},
    {"none",
        "C:\\Users\\dev\\AppData\\Local\\npm-cache\\_logs",
        "C:\\Users\\dev\\AppData\\Local\\npm-cache\\_logs"},
    {"none", "skeleton", "skeleton"},
    {"none", "desk" "-lamp sk8 risk" "-free asking", "desk" "-lamp sk8 risk" "-free asking"},
    {"none",
        "the ghost_of github_actions and glpat docs",
        "the ghost_of github_actions and glpat docs"},
    {"none",
        "AI" "zaXYZ AK" "IAshort np" "m_config_cache eyJ BEGIN",
        "AI" "zaXYZ AK" "IAshort np" "m_config_cache eyJ BEGIN"},
    {"none",
        "md5sum: 7e96d89e584c05456bb6412a99c7c707",
        "md5sum: 7e96d89e584c05456bb6412a99c7c707"},
    {"none",
        "X-Request-Id: 14d96369965b3d935d06353b1e4dea04",
        "X-Request-Id: 14d96369965b3d935d06353b1e4dea04"},
    {"none",
        "Set-Cookie: session=b96babd59da91cccbff478d0d358d392; Path=/",
        "Set-Cookie: session=b96babd59da91cccbff478d0d358d392; Path=/"},
    {"none", "", ""},
    {"none", "plain text with no secrets at all\n", "plain text with no secrets at all\n"},
    /* Several shapes in one text. */
    {"aws",
        "key AK" "IA7LJF7BYFRSK6J57O and gh" "p_W49U2N4nQODb6peC4dNTTdhQe2DK3EbH7VQa\n",
        "key [REDACTED:aws] and [REDACTED:github]\n"},
    {"url_credentials",
        "https:"
        "//u:sk"
        "-fxoMYVE2KzlGSrWhFKr5JGzcY0FVbuFld8MPXZHLX8SSt11a@h np"
        "m_Nij6ioNS5wT6dM9oJ6slvdGgJUzJ3flmKWRZ",
        "https://[REDACTED:url_credentials]@h [REDACTED:npm]"},
    {"jwt",
        "Set-Cookie: id=eyJ"
        "7SB-kgGLN23AcZe3ts-hwJqBSNf4A_.eyJN14uUOjRw8qaH6jtJ3ljqPG7ApkMnhqIxcLyAgHaL2H8BE"
        "PfPeDIkxwL8gq-UdBRwLwMExWe9NMCwjXqjNgrUklnAezGfRUSzaFw21wrb8Zq8MRNgn5mumZA.MuncT"
        "1vqXr6nFkIidf_Ci3gYHtEXcH725jUXZdVxPkE; HttpOnly\nAuthorization: Bearer eyJ"
        "ZHmPAyuMwyG7GcxCOAujGbfE0ch-jn.eyJor-njhMIR1bgJPBKBdr2fFxgLkAqpWmyu6saliFHrpYBS7"
        "4prOm0irQxcm4rbAvwNC1zJe-NiXioZQoyYS6ByedURR008qof2L8oQ4qbaZL5oK1iW5a7hYqR.p1weH"
        "ysaKGeovvl7cq-KC4tQxhG9EzfVwYaNLxk00Lj\n",
        "Set-Cookie: id=[REDACTED:jwt]; HttpOnly\nAuthorization: Bearer "
        "[REDACTED:authorization]\n"},
    {"private_key",
        "commit 9c5a4a26acaf6fc7c8dad960bb49d472aac3a176\n--"
        "---BEGIN "
        "PRIVATE KEY-----\nfonJ5wrwgQFgHRILEN6TT+0xE+bZUX3wTGUpixVUAytwVNk0xtDt5znGdkVGp9"
        "B3\nzkBF5kYhvzgRegciA04DHAjyOmavaFOFU5a/V6Mb8b7z2Mr15MDMwjZa7EMXwVus\n"
        "-----END PRIVATE KEY-----\n32f7e416d3cac7f696a2e8ec7985718a71e906fee81cd5ed927dc"
        "8fa4a1d76d2",
        "commit 9c5a4a26acaf6fc7c8dad960bb49d472aac3a176\n[REDACTED:private_key]\n"
        "32f7e416d3cac7f696a2e8ec7985718a71e906fee81cd5ed927dc8fa4a1d76d2"},
    /* At a token's minimum length, and one byte short of it (the scan's
     * quick reject before a validator must not drop the first). */
    {"github", "key gh" "p_0123456789abcdefghijABCDEFGHIJ012345 end", "key [REDACTED:github] end"},
    {"none", "key gh" "p_0123456789abcdefghijABCDEFGHIJ01234 end", "key gh" "p_0123456789abcdefghijABCDEFGHIJ01234 end"},
    {"aws", "id AK" "IAIOSFODNN7EXAMPLE.", "id [REDACTED:aws]."},
    {"none", "id AK" "IAIOSFODNN7EXAMPL.", "id AK" "IAIOSFODNN7EXAMPL."},
    {"slack", "t=xo" "xb-1234567890-abcdefghij ok", "t=[REDACTED:slack] ok"},
    {"none", "t=xo" "xb- 1234567890-abcdefghij ok", "t=xo" "xb- 1234567890-abcdefghij ok"},
    {"none", "xo" "xq-1234567890-abcdefghij", "xo" "xq-1234567890-abcdefghij"},
};

#endif /* SBX_TESTS_REDACT_SHAPES_CASES_H */
