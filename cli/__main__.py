from pylog.cli.main import main

main()
