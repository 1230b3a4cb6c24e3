from torchvista_dash.cli import main

raise SystemExit(main())
